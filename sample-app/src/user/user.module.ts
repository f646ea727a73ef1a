import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { PlatformUserAuthModule, platformUserAuthConfig } from 'nestjs-platform-auth/user';
import { UserController } from './user.controller.js';

/** User sign-in (Authorization Code + PKCE), configured from the PLATFORM_USER_* variables. */
@Module({
  imports: [
    ConfigModule.forFeature(platformUserAuthConfig),
    PlatformUserAuthModule.forRootAsync(platformUserAuthConfig.asProvider()),
  ],
  controllers: [UserController],
})
export class UserModule {}
